"""The deletes by stage both operations end with: ``driver`` runs one Spark action per stage of
core's deletion order (imports pyspark); ``executor`` deletes in bulk batches on the executors
(no pyspark)."""
