"""Failover: promote a kit-protected replica in place (DisassociateTableReplication), open it to writers with the
failover documents, optionally set a point in time, verify and report; plan the way back (`s3tables-kit failover`)."""
