"""The local grants: what ``connect`` obtains and the stdio door reads with.

The OAuth sign-in (``oauth_flow``, ``loopback``), the credential cache on disk (``cache_root``,
``cache_files``, ``grant_cache``, ``credentials``), renewal of expiring grants (``renewal``,
``renewing_rs``), several cached grants read as one package (``package``), the readers a local
command calls with (``readers``) and a brief look at whether a provider answers
(``provider_probe``).
"""
