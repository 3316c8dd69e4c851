"""External volumes: directories of files in local storage or an S3-compatible bucket."""
