"""The RS client: the only code that talks HTTP to the resource server."""
