"""Operations after `cdktf deploy`: replication status and lag (`status`), hardening service-created replicas
(`harden`) and auditing live protections against the configuration (`audit`). Each module is a thin CLI
over pure
functions that take a `clients.Clients` factory, so tests drive them against a local endpoint."""
