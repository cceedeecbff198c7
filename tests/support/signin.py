"""A ``/login`` link redeemed as a browser does (``POST /people/signin``): the person's own credential."""

from __future__ import annotations

import json
import urllib.request

from tests.support.gateway_proc import GatewayProcess


def signin_token(gw: GatewayProcess, url: str) -> str:
    """The credential a sign-in link (``…#signin=<code>``) is worth, once."""
    code = url.split("#signin=")[1]
    req = urllib.request.Request(gw.http + "/people/signin", data=json.dumps({"code": code}).encode(),
                                 headers={"content-type": "application/json"}, method="POST")
    with urllib.request.urlopen(req, timeout=10) as resp:
        return str(json.loads(resp.read())["token"])
