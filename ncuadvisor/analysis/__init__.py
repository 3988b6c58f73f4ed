"""The analysis layer: roofline, kernel language, performance models, ranking, source location and the pipeline."""
