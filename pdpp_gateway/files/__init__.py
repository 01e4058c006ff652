"""Files the gateway keeps for a person: written privately and whole (``private``), and the
ports the sandbox and demo remember (``ports``)."""
