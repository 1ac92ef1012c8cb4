"""The self-contained HTML report: sections, inline SVG charts, shared parts."""
