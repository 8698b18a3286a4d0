"""One router per Kylin resource; `precube.server.app.ROUTERS` lists and mounts them."""
