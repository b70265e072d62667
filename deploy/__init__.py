"""Deployment: the production process layout, its supervisor, and the local topology of `make up`."""
