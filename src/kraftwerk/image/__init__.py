"""The metadata image: replay a metadata log into an immutable image, write it at any version."""
