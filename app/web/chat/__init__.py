"""A session's page, its permission cards and live stream, and the JSON API they share."""
