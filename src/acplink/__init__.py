"""acplink."""
