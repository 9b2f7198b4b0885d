from bridge.tools.bridge import Bridge, Reply

__all__ = ["Bridge", "Reply"]
