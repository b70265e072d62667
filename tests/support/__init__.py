"""What the tests share: servers they start, documents they make, probes, and the paths of the repository."""
