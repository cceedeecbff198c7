"""The web chat as a whole channel: what agents post, react to, pin and delete in a session, and the files
they send there (kept in the database and served to the page by an unguessable address).

The page itself (``gateway/webchat/static``, stitched by ``gateway.webchat.page``) talks the ordinary gateway protocol;
the ``webchat`` channel in ``channels/`` reaches this package through ``PlatformHost.webchat``.
"""

from gateway.webchat.files import FILES_PATH, WebchatFile, serve_file
from gateway.webchat.posts import WebchatPosts

__all__ = ["FILES_PATH", "WebchatFile", "WebchatPosts", "serve_file"]
