"""The typed stack config and its loaders."""
