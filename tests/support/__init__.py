"""Real test parts shared by the whole suite: engines, model files, loopback servers."""
