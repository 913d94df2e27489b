"""The BQAS scoring service: FastAPI app, durable jobs, tenants and limits (see docs/service.md)."""
