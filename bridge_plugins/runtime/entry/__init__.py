"""Files a launcher runs by path, before the job's own code (stdlib only; see unquote_argv.py)."""
