"""channels package."""
