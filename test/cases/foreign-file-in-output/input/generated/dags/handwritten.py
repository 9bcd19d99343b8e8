# A DAG someone wrote by hand in the output folder.
from airflow.sdk import dag
