"""The S3 Tables replica kit: provision (`infra`), review (`policies`), recover and operate (`jobs`), on one shared
configuration and outputs contract (`topology`).

In a checkout the four packages live at the repository's top level and `s3tables_kit/` names them through
symbolic links; each refuses its bare name (`import jobs`), so a module has one name. The wheel holds them as real
subpackages. Nothing runs on import.
"""
