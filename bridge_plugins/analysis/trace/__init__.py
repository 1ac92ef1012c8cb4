"""Chrome traces: the streaming reader, the one-pass collector and the figures computed from it."""
