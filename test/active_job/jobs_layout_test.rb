# frozen_string_literal: true

require "test_helper"

# The job layer's files, one constant each, named after it: lib/lease_machines/jobs/store_pool.rb defines
# LeaseMachines::Jobs::StorePool and nothing else at that level, and no constant of the gem shadows Rails' own.
class JobsLayoutTest < Minitest::Test
  LIB = File.expand_path("../../lib/lease_machines", __dir__)

  def camelized(path) = File.basename(path, ".rb").split("_").map(&:capitalize).join

  def defined_in(path, indent)
    File.read(path).scan(/^#{" " * indent}(?:class|module) ([A-Z]\w*)/).flatten
  end

  def test_each_file_of_the_job_layer_defines_the_one_constant_it_is_named_after
    files = Dir[File.join(LIB, "jobs", "*.rb")]
    assert_operator files.size, :>=, 12
    files.each do |path|
      assert_equal [camelized(path)], defined_in(path, 4), "#{path}: defines #{defined_in(path, 4).inspect}"
    end
    %w[holds_lease lease_busy lease_lost].each do |file|
      path = File.join(LIB, "#{file}.rb")
      assert_equal [camelized(path)], defined_in(path, 2), "#{path}: one constant, named after the file"
    end
  end

  def test_nothing_in_the_gem_shadows_a_rails_namespace
    skip "ActiveJob is not installed for this Ruby" unless require_rails
    shadows = %i[ActiveJob ActiveRecord ActiveSupport Rails].select { LeaseMachines.const_defined?(_1, false) }
    assert_empty shadows, "constants of LeaseMachines that hide Rails' own inside the gem's code"
  end

  private

  def require_rails
    require "lease_machines/jobs"
    true
  rescue LoadError
    false
  end
end
