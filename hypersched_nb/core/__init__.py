"""hypersched_nb."""
