"""What the researcher learned about prices, kept across sessions for everyone it serves.

Reached through the catalog (eve__search, eve__tool); the three findings most relevant to
each question go into its prompt at the start of the turn.
"""

from eve.memory import define_memory

default = define_memory(
    scope="agent",
    description="price findings worth keeping: an item, its price and when it was seen",
    recall=3,
    expose="catalog",
)
