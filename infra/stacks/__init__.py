from s3tables_kit.infra.bindings import load_provider_lazily

load_provider_lazily()  # before any module here imports a provider resource: see infra/bindings.py
