"""Storage connections: where volumes' files live and the credentials to reach them."""
