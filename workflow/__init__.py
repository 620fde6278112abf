"""Pipeline definition: the stage registry, the dvc.yaml renderer and the profiles."""
