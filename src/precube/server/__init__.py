"""`precube serve`: one ASGI application (FastAPI on uvicorn) with Kylin 5's REST API under `/kylin/api`,
holding the metadata store, one query session per project, the result cache and the job service."""
