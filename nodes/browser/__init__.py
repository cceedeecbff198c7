"""The node's browser: one headless Chromium, shared by the canvas (``canvas.*``) and browser control
(``browser.proxy``). Optional: without Playwright or a Chromium binary the node declares neither."""
