"""Views: a name for a query, read wherever a query is bound as the query it stands for."""
