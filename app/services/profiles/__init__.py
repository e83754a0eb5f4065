"""What this machine has (backends, doctor), profiles' instruction files, the first run."""
