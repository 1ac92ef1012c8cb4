"""The job directory: the contract between the job that writes, the trigger that asks and the
readers. Names and layout (``names``), the directory scan (``scan``), safe file-system helpers
(``own_dirs``, ``regular_file``) and the on-demand protocol (``on_demand``, ``on_demand_files``).
Standard library only (plus ``bridge_plugins.config``).
"""
