"""The installed eve version, written into compile metadata, and the name eve is installed by."""

__version__ = "0.2.0"
#: the distribution on the package index (``pip install eve-durable``): ``eve``, ``pyeve``
#: and ``eve-agent`` there are unrelated projects; the import package stays ``eve``
DISTRIBUTION = "eve-durable"
