"""The local drills: the recovery walkthrough (`demo`), the failover drill and its planned round trip, and the local
recovery rehearsal, each on this machine with no AWS."""
