"""The `acplink` command line."""
