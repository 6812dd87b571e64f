"""pytest plugin (fixtures) for acplink users."""
