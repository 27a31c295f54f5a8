-- Argo CD health check for every tablekeeper.io kind (docs/health-checks.md).
-- The same rules as tests/support/kstatus.py `health`, run by the apiserver tests (lupa) on real objects:
-- deleting or an unobserved generation -> Progressing; paused -> Suspended; Ready=True -> Healthy;
-- Ready=False with status.state/phase Failed -> Degraded (a permanent error); otherwise Progressing.
-- PaimonMaintenanceRun (Job-style conditions): Failed=True -> Degraded, Complete=True -> Healthy.
local hs = {status = "Progressing", message = "Waiting for the operator"}
if obj.metadata ~= nil and obj.metadata.deletionTimestamp ~= nil then
  hs.message = "Resource scheduled for deletion"
  return hs
end
local status = obj.status
if status == nil then
  return hs
end
local generation = obj.metadata and obj.metadata.generation
if generation ~= nil and status.observedGeneration ~= nil and status.observedGeneration ~= generation then
  hs.message = "generation " .. generation .. " not observed yet (observed " .. status.observedGeneration .. ")"
  return hs
end
local by_type = {}
for _, c in ipairs(status.conditions or {}) do
  by_type[c.type] = c
end
if by_type["Complete"] ~= nil or by_type["Failed"] ~= nil then
  if by_type["Failed"] ~= nil and by_type["Failed"].status == "True" then
    return {status = "Degraded", message = (by_type["Failed"].reason or "") .. ": " .. (by_type["Failed"].message or "")}
  end
  if by_type["Complete"] ~= nil and by_type["Complete"].status == "True" then
    return {status = "Healthy", message = by_type["Complete"].message or ""}
  end
  hs.message = "running"
  return hs
end
local paused = by_type["ReconciliationPaused"]
if paused ~= nil and paused.status == "True" then
  return {status = "Suspended", message = paused.message or "paused"}
end
local ready = by_type["Ready"]
if ready == nil then
  return hs
end
if generation ~= nil and ready.observedGeneration ~= nil and ready.observedGeneration ~= generation then
  hs.message = "Ready describes an older generation"
  return hs
end
local text = (ready.reason or "") .. ": " .. (ready.message or "")
if ready.status == "True" then
  return {status = "Healthy", message = text}
end
if status.state == "Failed" or status.phase == "Failed" then
  return {status = "Degraded", message = text}
end
hs.message = text
return hs
