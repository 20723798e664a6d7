# frozen_string_literal: true

# The lease dashboard, mounted as an application mounts it: LeaseMachines::Web serves its class-level configuration,
# whose store is by default the jobs' own (the application's database, through the Railtie). Read-only here: no
# LeaseMachines::Web.configure turns actions on.
require "lease_machines/web"

Rails.application.routes.draw do
  mount LeaseMachines::Web => "/leases"
end
