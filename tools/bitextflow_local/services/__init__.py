"""The local services of the demo and the tests: SeaweedFS (S3), the local site and Airflow, on 127.0.0.1."""
