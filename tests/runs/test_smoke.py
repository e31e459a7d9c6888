from tests.runs.conftest import b64, rid

SUPPLIER = """---
name: supplier-onboarding
description: Check a new supplier and get finance approval.
inputs:
  vendorName: string
  amount: { type: number, description: Expected annual spend in USD }
steps:
  - id: check_vendor
    agent: Check the vendor. Attach the screening report.
    output:
      cleared: boolean
      summary: string
    evidence: [file]
    next:
      - { to: approve, when: Vendor is cleared on both lists }
      - { to: decline, when: Any sanctions hit }
  - id: approve
    person: finance-approver
    approve: Approve only when the vendor is cleared.
    due: 2d
    on_reject: check_vendor
    next: done
  - id: decline
    finish: declined
  - id: done
    finish: onboarded
---

# Supplier onboarding
"""


def test_supplier_onboarding_end_to_end(publish, agent, person_caller):
    publish(SUPPLIER)
    view = agent.write("start_run", process="supplier-onboarding", inputs={"vendorName": "Acme", "amount": 48000})
    run_id = view["run"]["id"]
    assert view["run"]["state"] == "active"
    work = agent("get_work")
    assert [i["stepId"] for i in work["items"]] == ["check_vendor"]
    claimed = agent.write("claim", runId=run_id, stepId="check_vendor")
    refused = agent.fails("submit", "not_accepted", token=claimed["token"], output={"cleared": "yes"},
                          summary="x", requestId=rid())
    assert "output.cleared: expected boolean" in refused["issues"]
    assert "evidence: file required" in refused["issues"]
    up = agent.write("upload", fileName="r.pdf", contentType="application/pdf", contentBase64=b64(b"report"))
    done = agent.write("submit", token=claimed["token"], output={"cleared": True, "summary": "ok"},
                       evidence=[{"kind": "file", "ref": up["id"]}], summary="Checked.", next="approve",
                       reason="clean")
    assert done["run"]["state"] == "waiting"
    [item] = done["workItems"]
    finance = person_caller("fin@example.com", groups=["finance-approver"])
    decided = finance.write("decide", runId=run_id, workItemId=item["id"], snapshot=item["snapshot"],
                            decision="approved")
    assert decided["run"]["state"] == "ended"
    assert decided["run"]["outcome"] == "onboarded"
