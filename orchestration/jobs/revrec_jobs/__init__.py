"""Revenue-recognition jobs of the bundled example (producer ``type: python``)."""
