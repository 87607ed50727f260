"""Framework plugins: finding the ``eve.plugins`` entry points and what they provide.

``entry_points`` loads installed plugins into a pluggy manager validated against the hook
specs; ``provided`` asks them for model providers and tool sets. The hook relay (event
subscribers), the compiler (tool sets) and the model registry (providers) each use what
they need from here, so none of them reaches into another for plugin discovery.

Internal: plugin authors import ``hookimpl`` and ``PLUGIN_GROUP`` from ``eve.hooks``, ``ToolSet``
from ``eve.tools`` and model types from ``eve.models`` (docs/architecture.md, "The public
surface").
"""
