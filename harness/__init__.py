"""The harness: everything that deploys or exercises a topology on a laptop (the one deployer into the local AWS
stand-in, e2e, sandbox, live-verify's stand-in, the drills, the local replica helper, the provider build). It runs
from a checkout, is not shipped in the wheel, and sits below `bench` and above the product packages."""
