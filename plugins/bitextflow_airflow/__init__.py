"""Airflow glue for bitextflow: connections, context and task wrappers. No stage logic lives here."""
