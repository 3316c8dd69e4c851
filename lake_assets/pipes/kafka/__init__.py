"""Kafka pipes: READ_KAFKA as a relation, batches planned from the topic's offsets, and runs that
append each batch in one Delta commit."""
