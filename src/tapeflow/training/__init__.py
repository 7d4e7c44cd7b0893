"""The YAML trainer: ``tapeflow train CONFIG.yaml`` and ``tapeflow.train(config)``."""
