"""The model gateway: agent runs hold a stand-in credential, the gateway adds the real one outside the sandbox.

- ``standins``: the per-run stand-in credentials (issued and revoked with the run, like run tokens);
- ``store``: the stand-ins of node turns shared with the other replicas (``model_standins``), and what they used there;
- ``clis``: how each agent CLI is fronted (its upstream, the credential the gateway holds, what the run is given);
- ``oauth``: a subscription login's bearer, refreshed by the gateway and written back to the host's file;
- ``proxy``: the ``/model/...`` route that checks the stand-in, adds the credential and streams the answer back;
- ``wire``: the usage an upstream's answer states (Anthropic, OpenAI Responses and Chat, Gemini);
- ``egress``: the HTTPS ``CONNECT`` proxy with its allowlist and deny list, for runs without a network;
- ``service``: the capability's service (``start``: its entry); ``doctor``: its lines; ``config``: its section.
"""

from gateway.composition.capabilities import Capability

CAPABILITY = Capability("credentials", start="gateway.credentials.start:start",
                        doctor="gateway.credentials.doctor:credentials_report")
"""What this capability adds to the gateway (``gateway.composition.capabilities``)."""
