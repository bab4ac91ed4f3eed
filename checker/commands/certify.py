"""The `certify` command: proof certificates re-checked with cvc5, each for the policy the operator names."""

from __future__ import annotations

import json
from pathlib import Path

from prunecheck.spec.errors import PolicySyntaxError
from prunecheck.symbolic.interrupts import commit

EXIT_HOLDS, EXIT_VIOLATED, EXIT_UNKNOWN = 0, 1, 3


def run(args, stdout) -> int:
    """Re-check certificates (all of a policy's together: they may assume each other); 0 all confirmed, 1 some
    rejected or refuted, 3 some unchecked."""
    from prunecheck.checker.engines.certificate import CertificateError, Status, certificate_json
    from prunecheck.checker.engines.certificate_set import certify_set
    from prunecheck.checker.outputs.itf import regular_file
    from prunecheck.checker.outputs.kinds import claimed_certificate
    from prunecheck.checker.language.operator import judged_from_args

    documents = []
    for name in args.certificates:
        path = Path(name)
        regular_file(path)
        try:
            documents.append((str(path), claimed_certificate(certificate_json(path.read_text(encoding="utf-8")), path)))
        except CertificateError as exc:  # readable, but tampered: rejected like any other forged field
            documents.append((str(path), exc))
        except (OSError, UnicodeDecodeError) as exc:
            raise PolicySyntaxError(f"cannot read certificate: {exc}", str(path), 1, 1) from None
        except json.JSONDecodeError as exc:
            raise PolicySyntaxError(f"certificate is not JSON: {exc.msg}", str(path), exc.lineno, exc.colno) from None
        except RecursionError:
            raise PolicySyntaxError("certificate is not JSON: nested too deeply", str(path), 1, 1) from None
    policy = None
    if args.policy:
        policy = judged_from_args(args.policy, args)
    verdicts = certify_set(documents, policy, args.timeout * 1000, args.rlimit)
    commit()  # every certificate is re-checked: the verdicts are printed whole
    for v in verdicts:
        about = f"{v.label}: " if v.label else ""
        print(f"{v.name}: {about}{v.status} ({v.reason})", file=stdout)
        for o in v.obligations:
            print(f"  {o.name:<12} cvc5: {o.cvc5:<8} z3: {o.z3}", file=stdout)
        for condition, by in v.discharged:
            print(f"  assumes {condition}: discharged by {by}", file=stdout)
        if v.label and not v.discharged and v.status == Status.CONFIRMED:
            print("  assumes nothing", file=stdout)
    statuses = {v.status for v in verdicts}
    if statuses & {Status.REJECTED, Status.REFUTED}:
        return EXIT_VIOLATED
    return EXIT_UNKNOWN if Status.UNCHECKED in statuses else EXIT_HOLDS


__all__ = ["run"]
