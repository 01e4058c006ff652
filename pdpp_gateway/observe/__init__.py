"""What operators see: log lines on stderr (``logs``), spans for a collector (``tracing``), and
the request id both carry (``request_id``)."""
