"""Chrome traces: the streaming reader and the one-pass collector; the figures are on the floor above (analyzers/)."""
