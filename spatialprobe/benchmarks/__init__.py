"""The field's benchmarks as run kinds: spatial QA, VSR (CLIP and fine-tuned ViLT), SpatialMQA."""
