# frozen_string_literal: true

class CreateAccountsAndReports < ActiveRecord::Migration[ActiveRecord::VERSION::STRING.to_f]
  def change
    create_table(:accounts) { |t| t.string :name }
    create_table(:reports) { |t| t.string :body; t.integer :token }
  end
end
