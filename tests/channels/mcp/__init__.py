"""The ``mcp`` channel's tests: the SDK's client over the app served in process."""
