-- wrk script: places orders and pays each one it placed, through the local process.
--   KEY=jadpo_sk_... wrk -t2 -c8 -d60s -s scripts/load-pay.lua http://127.0.0.1:3000
-- Every request carries its own Idempotency-Key (a per-thread random prefix and a counter);
-- each `place_order` answer's order id is paid by a later request of the same thread, unless
-- PAY=0 (orders only).
local key = os.getenv("KEY") or error("set KEY to a service key (make run prints one)")
local pay = os.getenv("PAY") ~= "0"
local prefix, n, unpaid = "", 0, {}

function init(args)
  math.randomseed(os.time() + tonumber(tostring({}):match("0x(%x+)"), 16) % 100000)
  prefix = string.format("load-%08x", math.random(0, 0x7fffffff))
end

local function post(action, idem, body)
  return wrk.format("POST", "/actions/" .. action, {
    ["Authorization"] = "Bearer " .. key,
    ["Content-Type"] = "application/json",
    ["Idempotency-Key"] = idem,
  }, body)
end

function request()
  n = n + 1
  local order = table.remove(unpaid)
  if order then
    return post("pay_order", prefix .. "-pay-" .. order, '{"order_id": "' .. order .. '", "amount": 1250}')
  end
  return post("place_order", prefix .. "-" .. n, '{"customer": "c1", "items": [{"sku": "A", "qty": 1}]}')
end

function response(status, headers, body)
  if status == 201 and pay then
    local order = body:match('"order_id"%s*:%s*"([^"]+)"')
    if order then table.insert(unpaid, order) end
  end
end
